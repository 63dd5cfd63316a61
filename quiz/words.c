/*
 * words.c — the quiz program's own words in both languages (see words.h).
 */
#include "quiz/words.h"

static const QuizWords WORDS[LANG_COUNT] = {
    [LANG_EN] = {"Question %d of %d", "Your answer (1-4 or a-d): ", "Please answer 1-4 or a-d.",
                 "Right.", "Not quite.", "The answer: %c) %s", "Proof: %s, %s", "Measured by: %s",
                 "Score: %d of %d", "Answers and explanations are shown while you take the quiz (run it in a terminal).",
                 "Input ended: the quiz stops here."},
    [LANG_AR] = {"السؤال %d من %d", "إجابتك (1-4 أو a-d): ", "يُرجى الإجابة برقم من 1 إلى 4 أو بحرف من a إلى d.",
                 "صحيح.", "ليس تمامًا.", "الإجابة: %c) %s", "البرهان: %s، %s", "يقيسه: %s",
                 "النتيجة: %d من %d", "تظهر الإجابات والتفسيرات أثناء إجراء الاختبار (شغّله في طرفية).",
                 "انتهى الإدخال: يتوقف الاختبار هنا."},
};

const QuizWords *quiz_words(QuizLang lang)
{
    return &WORDS[lang];
}
