/*
 * words.c — the quiz program's own words in both languages (see words.h).
 */
#include "quiz/words.h"

static const QuizWords WORDS[LANG_COUNT] = {
    [LANG_EN] = {
        .question_of = "Question %d of %d",
        .your_answer = "Your answer (1-4 or a-d): ",
        .invalid = "Please answer 1-4 or a-d.",
        .right = "Right.",
        .wrong = "Not quite.",
        .correct_was = "The answer: %c) %s",
        .proof = "Proof: %s, %s",
        .measure = "Measured by: %s",
        .score = "Score: %d of %d",
        .chosen = "your answer",
        .the_answer = "the answer",
        .preview_note = "Answers and explanations are shown while you take the quiz (run it in a terminal).",
        .ended = "Input ended: the quiz stops here.",
        .next = "Press Enter for the next question.",
        .no_bidi = "Arabic is printed in the order it is stored: a terminal that does not shape it right to left "
                   "(most do not, tmux and xterm among them) shows its letters apart and left to right. The page "
                   "shows it as it should read: build/quiz/quiz --html results/quiz.html, then open "
                   "results/quiz.html in a browser. If this terminal does shape Arabic, pass --bidi-terminal.",
        .paired_spread = "%s (%s to %s, %d paired steps)",
        .timed_spread = "%s (%s to %s, %d timed steps)",
        .slower = "%s slower",
        .faster = "%s faster",
        .sources = "Figures from: %s.",
        .quick_run = "quick run",
        .full_run = "full run",
        .unrecorded_run = "mode not recorded",
        .undated = "date not recorded",
        .not_run = "No figures from this machine yet: run %s --quick to see them in this explanation.",
        .not_recorded = "%s holds no record for some of this explanation's figures (was it run with other "
                        "flags?): run %s --quick to measure them.",
        .unreadable = "The results cannot be read (%s), so their figures are left out: run %s --quick again.",
        .invalid_figure = "The figure %s in %s is left out: %s. Run %s --quick again.",
        .invalid_why = {"it is not a number", "it is negative", "it is not above zero", "it is not a whole number",
                        "it is too large to be a measurement", "its interval does not hold the value",
                        "the rest of its interval is missing"},
        .out_of_order = "it contradicts %s, since %s",
        .time_busy = "This machine was busy while %s measured its times (other processes ran for %s of its CPU "
                     "time and the hypervisor stole %s; the 1-minute load average reached %s on %d cores): they "
                     "are too noisy to teach from.",
        .time_unknown = "The results of %s do not record how much its times varied or how busy the machine was "
                        "(they come from an older version of the bench), so its times are not quoted.",
        .time_few = "%s timed too few steps to give an interval (%s), so its times are not quoted.",
        .time_wide = "The times %s measured vary too much to carry the lesson (%s).",
        .time_few_left_out = "One of the times %s measured comes from too few steps to give an interval (%s), so "
                             "the explanation leaves it out; rerun %s --quick to see it.",
        .time_wide_left_out = "One of the times %s measured varies too much to carry the lesson (%s), so the "
                              "explanation leaves it out; rerun %s --quick on a quiet machine to see it.",
        .time_contradicted = "The times %s measured contradict each other: %s. Only noise does that.",
        .time_quick = "%s ran in quick mode, on small configurations: %s",
        .time_instead_full = "This explanation teaches from the exact bytes instead; run %s without --quick, on a "
                             "quiet machine, to see the times.",
        .time_instead = "This explanation teaches from the exact bytes and FLOPs instead; rerun %s --quick on "
                        "a quiet machine to see the times.",
        .language_name = "English",
        .noscript = "JavaScript is off: open “Answer and explanation” under a question to check your answer.",
        .answer_summary = "Answer and explanation",
        .plot_missing = "(plot %s not drawn yet: run bench/plots.sh %s %s)",
        .plot_broken = "(%s is not a readable PNG file)",
        .plot_caption = "%s, drawn by bench/plots.sh from this machine's results; select it for its full size",
        .result_title = "Your score",
        .again = "Start again",
        .footer_title = "Where these figures come from",
        .when = "Measured",
        .commit = "Commit",
        .cpu = "CPU",
        .threads = "Threads",
        .load = "Load while measuring",
        .mode = "Mode",
        .system = "System",
        .benches = "Benches",
        .no_results = "No results in %s yet: each figure above names the bench that measures it.",
        .unrecorded = "not recorded in the results",
        .cpu_line = "%s cores, OpenBLAS kernels for %s (the CPU's model is not recorded in the results)",
        .load_line = "other processes ran for %s of the CPU time; 1-minute load average %s before, %s after; %s of "
                     "the CPU time stolen by the hypervisor",
        .dirty = "with uncommitted changes",
        .clean = "no uncommitted changes",
        .quick = "quick (small configurations)",
        .full = "full",
        .range = "%s to %s",
        .comma = ", ",
        .semicolon = "; ",
    },
    [LANG_AR] = {
        .question_of = "السؤال %d من %d",
        .your_answer = "إجابتك (1-4 أو a-d): ",
        .invalid = "يُرجى الإجابة برقم من 1 إلى 4 أو بحرف من a إلى d.",
        .right = "صحيح.",
        .wrong = "ليس تمامًا.",
        .correct_was = "الإجابة: %c) %s",
        .proof = "البرهان: %s، %s",
        .measure = "يقيسه: %s",
        .score = "النتيجة: %d من %d",
        .chosen = "إجابتك",
        .the_answer = "الإجابة",
        .preview_note = "تظهر الإجابات والتفسيرات في أثناء المسابقة (شغّلها في طرفية).",
        .ended = "انتهى الإدخال: تتوقف المسابقة هنا.",
        .next = "اضغط Enter للانتقال إلى السؤال التالي.",
        .no_bidi = "تُطبع العربية هنا بترتيب تخزينها، والطرفية التي لا تعرضها من اليمين إلى اليسار (وهي أغلب "
                   "الطرفيات، ومنها tmux وxterm) تُظهر حروفها منفصلةً ومن اليسار إلى اليمين. أما الصفحة فتعرضها "
                   "كما تُقرأ: نفّذ build/quiz/quiz --html results/quiz.html ثم افتح results/quiz.html في المتصفح. "
                   "وإن كانت طرفيتك تعرض العربية كما ينبغي فأضف الخيار ‎--bidi-terminal.",
        .paired_spread = "%s (من %s إلى %s، أزواج الخطوات: %d)",
        .timed_spread = "%s (من %s إلى %s، الخطوات المقيسة: %d)",
        .slower = "أبطأ بنسبة %s",
        .faster = "أسرع بنسبة %s",
        .sources = "مصدر الأرقام: %s.",
        .quick_run = "تشغيل سريع",
        .full_run = "تشغيل كامل",
        .unrecorded_run = "النمط غير مسجَّل",
        .undated = "التاريخ غير مسجَّل",
        .not_run = "لا أرقام من هذا الجهاز بعد: شغّل %s --quick لتظهر في هذا التفسير.",
        .not_recorded = "لا يحوي %s سجلًا لبعض أرقام هذا التفسير (هل شُغّل بخيارات أخرى؟): شغّل %s --quick لقياسها.",
        .unreadable = "تعذّرت قراءة النتائج (%s)، فأُسقطت أرقامها: شغّل %s --quick من جديد.",
        .invalid_figure = "أُسقط الرقم %s من %s: %s. شغّل %s --quick من جديد.",
        .invalid_why = {"فهو ليس عددًا", "فهو سالب", "فهو ليس أكبر من الصفر", "فهو ليس عددًا صحيحًا",
                        "فهو أكبر من أن يكون قياسًا", "فمجاله لا يحتوي القيمة", "فبقية مجاله مفقودة"},
        .out_of_order = "فهو يناقض %s، إذ %s",
        .time_busy = "كان هذا الجهاز مشغولًا حين قاس %s أزمنته (شغلت عمليات أخرى %s من وقت معالجه، واستلب المشرف "
                     "الافتراضي %s، وبلغ متوسط الحمل لدقيقة واحدة %s على %d من الأنوية): فهي أكثر ضجيجًا من أن "
                     "يُعلَّم بها.",
        .time_unknown = "لا تسجّل نتائج %s مدى تفاوت أزمنته ولا مدى انشغال الجهاز أثناء القياس (فهي من إصدار أقدم من "
                        "برنامج القياس)، لذا لا تُذكر أزمنته.",
        .time_few = "قاس %s خطوات أقل من أن تعطي مجالًا (%s)، لذا لا تُذكر أزمنته.",
        .time_wide = "تتفاوت الأزمنة التي قاسها %s أكثر من أن تحمل الدرس (%s).",
        .time_few_left_out = "أحد الأزمنة التي قاسها %s مأخوذ من خطوات أقل من أن تعطي مجالًا (%s)، لذا يُسقطه "
                             "التفسير؛ أعد تشغيل %s --quick لتراه.",
        .time_wide_left_out = "أحد الأزمنة التي قاسها %s يتفاوت أكثر من أن يحمل الدرس (%s)، لذا يُسقطه التفسير؛ "
                              "أعد تشغيل %s --quick على جهاز هادئ لتراه.",
        .time_contradicted = "تتناقض الأزمنة التي قاسها %s: %s. ولا يفعل ذلك إلا الضجيج.",
        .time_quick = "شُغّل %s في النمط السريع، على إعدادات صغيرة: %s",
        .time_instead_full = "ويعتمد هذا التفسير بدلًا منها على عدد البايتات الدقيق؛ شغّل %s من دون الخيار "
                             "‎--quick على جهاز هادئ لترى الأزمنة.",
        .time_instead = "ويعتمد هذا التفسير بدلًا منها على العدد الدقيق للبايتات ولعمليات الفاصلة العائمة (FLOPs)؛ أعد "
                        "تشغيل %s --quick على جهاز هادئ لترى الأزمنة.",
        .language_name = "العربية",
        .noscript = "جافاسكربت معطّلة: افتح «الإجابة والتفسير» تحت السؤال لتتحقق من إجابتك.",
        .answer_summary = "الإجابة والتفسير",
        .plot_missing = "(لم يُرسم %s بعد: شغّل bench/plots.sh %s %s)",
        .plot_broken = "(%s ليس ملف PNG مقروءًا)",
        .plot_caption = "%s، رسمه bench/plots.sh من نتائج هذا الجهاز؛ انقر عليه لتراه بحجمه الكامل",
        .result_title = "نتيجتك",
        .again = "ابدأ من جديد",
        .footer_title = "من أين تأتي هذه الأرقام",
        .when = "وقت القياس",
        .commit = "الإيداع",
        .cpu = "المعالج",
        .threads = "الخيوط",
        .load = "الحمل أثناء القياس",
        .mode = "النمط",
        .system = "النظام",
        .benches = "برامج القياس",
        .no_results = "لا توجد نتائج في %s بعد: كل رقم أعلاه يسمّي برنامج القياس الذي يقيسه.",
        .unrecorded = "غير مسجَّل في النتائج",
        .cpu_line = "عدد الأنوية %s، وشيفرة OpenBLAS المخصّصة لمعالجات %s (طراز المعالج غير مسجَّل في النتائج)",
        .load_line = "شغلت عمليات أخرى %s من وقت المعالج؛ ومتوسط الحمل لدقيقة واحدة %s قبل القياس و%s بعده؛ واستلب "
                     "المشرف الافتراضي %s من وقت المعالج",
        .dirty = "مع تعديلات غير مودَعة",
        .clean = "بلا تعديلات غير مودَعة",
        .quick = "سريع (إعدادات صغيرة)",
        .full = "كامل",
        .range = "من %s إلى %s",
        .comma = "، ",
        .semicolon = "؛ ",
    },
};

const QuizWords *quiz_words(QuizLang lang)
{
    return &WORDS[lang];
}
